import { Logger } from '@aws-lambda-powertools/logger';
import { currentContext } from './context';

const root = new Logger({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'ai-gateway' });

type Extra = Record<string, unknown>;

function withContext(extra: Extra | undefined): Extra {
  const ctx = currentContext();
  if (!ctx) return extra ?? {};
  return { trace_id: ctx.traceId, ...(ctx.workspaceId ? { workspace_id: ctx.workspaceId } : {}), ...extra };
}

/**
 * Structured JSON log lines (Powertools) with the request's trace id on every line.
 * Never pass secrets here: callers log ids, hashes prefixes and names, not keys.
 */
export const log = {
  debug: (message: string, extra?: Extra) => root.debug(message, withContext(extra)),
  info: (message: string, extra?: Extra) => root.info(message, withContext(extra)),
  warn: (message: string, extra?: Extra) => root.warn(message, withContext(extra)),
  error: (message: string, extra?: Extra) => root.error(message, withContext(extra)),
};

export const powertoolsLogger = root;

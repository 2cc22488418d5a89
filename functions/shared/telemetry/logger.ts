import { getNumberFromEnv, getXRayTraceIdFromEnv } from '@aws-lambda-powertools/commons/utils/env';
import { LogFormatter, Logger, LogLevelThreshold } from '@aws-lambda-powertools/logger';
import type { RequestContext } from './context';

/** Service name of every log line and of the EMF metrics' `service` dimension. */
export const SERVICE_NAME = process.env.POWERTOOLS_SERVICE_NAME ?? 'ai-gateway';

const root = new Logger({ serviceName: SERVICE_NAME });

type Extra = Record<string, unknown>;

/** The request a line belongs to: its trace id (and workspace, once authenticated) go on the line. */
export type LogContext = Pick<RequestContext, 'traceId' | 'workspaceId'>;

function withContext(extra: Extra | undefined, ctx: LogContext | undefined): Extra {
  if (!ctx) return extra ?? {};
  return { trace_id: ctx.traceId, ...(ctx.workspaceId ? { workspace_id: ctx.workspaceId } : {}), ...extra };
}

/**
 * Structured JSON log lines (Powertools); pass the request's context (`req.context`) and
 * the line carries its trace id. Never pass secrets here: callers log ids, hashes
 * prefixes and names, not keys.
 */
export const log = {
  debug: (message: string, extra?: Extra, ctx?: LogContext) => root.debug(message, withContext(extra, ctx)),
  info: (message: string, extra?: Extra, ctx?: LogContext) => root.info(message, withContext(extra, ctx)),
  warn: (message: string, extra?: Extra, ctx?: LogContext) => root.warn(message, withContext(extra, ctx)),
  error: (message: string, extra?: Extra, ctx?: LogContext) => root.error(message, withContext(extra, ctx)),
};

export const powertoolsLogger = root;

/** Powertools' timestamp rule (UTC ISO, or the offset of a TZ other than UTC), borrowed as is. */
class TimestampFormatter extends LogFormatter {
  override formatAttributes(): never {
    throw new Error('TimestampFormatter only formats timestamps');
  }
}
const timestamps = new TimestampFormatter();

/** Powertools' rule: POWERTOOLS_LOGGER_SAMPLE_RATE when it is a number from 0 to 1, else 0. */
const SAMPLE_RATE = ((rate: number) => (rate >= 0 && rate <= 1 ? rate : 0))(getNumberFromEnv({ key: 'POWERTOOLS_LOGGER_SAMPLE_RATE', defaultValue: 0 }));

/** Powertools leaves out top-level attributes that are undefined, null or ''. */
function putPresent(out: Extra, attributes: Extra): void {
  for (const key in attributes) {
    const value = attributes[key];
    if (value !== undefined && value !== null && value !== '') out[key] = value;
  }
}

/**
 * The line `log.info(message, extra, ctx)` prints, as text ending in a newline ('' when INFO
 * is not logged), for the one line written per request. Powertools' generic path (merged
 * attribute objects, and a JSON replacer called on every value) was measurably slower per line
 * (bench/README.md, "Changes made for speed"); this is
 * the same JSON for plain data: strings, numbers, booleans, null and plain objects. Errors,
 * Maps or BigInts, which Powertools' replacer converts, go through `log` instead.
 * test/unit/request-telemetry.test.ts holds it to Powertools' output.
 */
export function infoLine(message: string, extra: Extra, ctx: LogContext | undefined): string {
  if (root.level > LogLevelThreshold.INFO) return '';
  const line: Extra = {};
  putPresent(line, {
    level: 'INFO',
    message,
    timestamp: timestamps.formatTimestamp(new Date()),
    service: SERVICE_NAME,
    sampling_rate: SAMPLE_RATE,
    xray_trace_id: getXRayTraceIdFromEnv(),
  });
  putPresent(line, withContext(extra, ctx));
  return `${JSON.stringify(line)}\n`;
}

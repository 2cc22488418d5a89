import { readdirSync, readFileSync } from 'node:fs';
import { spawnLocalGateway } from './child-gateway';

export interface OwnDataGateway {
  url: string;
  adminKey: string;
  /** The gateway's process group: node and the JVM of its DynamoDB Local. */
  pid: number;
  /** Every process of the gateway killed at once, no shutdown (`kill -9` of node and Java). */
  kill(): Promise<void>;
  /**
   * `kill -9` of node alone: what it had sent to DynamoDB Local is still written (as DynamoDB
   * on AWS would). The gateway's own watchdog (infra/local/lifelines.ts) stops the JVM, which
   * writes its database on the way out; whatever of the group is left after `graceMs` is killed.
   */
  killNode(graceMs?: number): Promise<void>;
  /** SIGTERM to node only: the gateway's own shutdown (it stops its DynamoDB Local). */
  terminate(): Promise<number | null>;
  /** Resolves when node has exited. */
  exited: Promise<number | null>;
}

/**
 * `npm start` as its own process group, with its own data folder: DynamoDB Local (Java),
 * KMS key and admin key persist there, so a gateway started again on the same folder sees
 * what the killed one wrote.
 */
export async function startOwnDataGateway(dataDir: string, env: Record<string, string> = {}): Promise<OwnDataGateway> {
  const { child, url, adminKey, exited } = await spawnLocalGateway(
    {
      ...process.env,
      PORT: '0',
      GATEWAY_DATA_DIR: dataDir,
      GATEWAY_DYNAMODB_ENDPOINT: '',
      GATEWAY_KMS_ENDPOINT: '',
      GATEWAY_ADMIN_KEY: '',
      GATEWAY_TABLE_PREFIX: 'gateway-',
      GATEWAY_TRUSTED_HOSTS: '127.0.0.1,localhost',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      GATEWAY_LOAD_HANDLERS: 'on-first-use',
      ...env,
    },
    { detached: true, startTimeoutMs: 90_000 },
  );
  const group = child.pid!;
  return {
    url,
    adminKey,
    pid: group,
    exited,
    kill: async () => {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await exited;
    },
    killNode: async (graceMs = 60_000) => {
      process.kill(group, 'SIGKILL');
      await exited;
      // Killing the JVM while it writes its database out (as an earlier fixed 2 s wait here did on
      // a loaded machine) is the other test's crash, of node and Java together.
      const deadline = Date.now() + graceMs;
      while (groupAlive(group) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        /* already gone */
      }
    },
    terminate: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Whether a process of the group still runs (an exited one that no one has reaped yet does not). */
function groupAlive(group: number): boolean {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // After the command name (which may hold spaces): state, ppid, pgrp.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === group && state !== 'Z') return true;
    } catch {
      /* gone meanwhile */
    }
  }
  return false;
}

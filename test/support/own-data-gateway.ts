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
   * on AWS would). The JVM is killed once node is gone and it has had `settleMs` to finish.
   */
  killNode(settleMs?: number): Promise<void>;
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
    killNode: async (settleMs = 2000) => {
      process.kill(group, 'SIGKILL');
      await exited;
      await new Promise((r) => setTimeout(r, settleMs));
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

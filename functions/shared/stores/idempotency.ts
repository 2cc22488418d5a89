import { config } from '../config';
import { getItem, updateItem } from '../db/ops';

/**
 * Idempotency-Key items (table `idempotency`): one per (workspace, gateway key, Idempotency-Key).
 * A request claims its key with a conditional write; while it runs it holds a lease that it
 * renews; it ends by storing its answer (`done`) or by releasing the lease (the key is free
 * again). Items expire 24 hours after the first request (TTL); an expired item that DynamoDB
 * has not deleted yet counts as absent.
 */

const IDEMPOTENCY_TABLE = 'idempotency';

/** How long an Idempotency-Key is honoured after its first request. */
export const IDEMPOTENCY_WINDOW_SECONDS = 24 * 60 * 60;

export interface IdempotencyScope {
  workspaceId: string;
  keyId: string;
}

/** A thrown gateway error, kept so its replay is thrown again (and shaped by the route's own middleware). */
export interface StoredError {
  type: string;
  message: string;
  param: string | null;
  code: string | null;
  extra?: Record<string, unknown>;
}

export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body as sent, gzip-compressed when `encoding` says so; absent when not `replayable`. */
  body?: Uint8Array;
  encoding?: 'gzip';
  /** A thrown error's `StoredError` as JSON (its `extra` may nest deeper than a DynamoDB map may). */
  error?: string;
  /** False when the answer was too large to store: the key still guards against a second run. */
  replayable: boolean;
}

export interface IdempotencyItem {
  pk: string;
  sk: string;
  state: 'in_flight' | 'done';
  fingerprint: string;
  lease_id: string;
  /** Epoch ms; the claim lapses after it unless renewed. */
  lease_until: number;
  /** Epoch seconds (DynamoDB TTL). */
  ttl: number;
  created_at: number;
  answer?: StoredAnswer;
}

const keyOf = (scope: IdempotencyScope, idempotencyKey: string) => ({ pk: `IDEM#${scope.workspaceId}#${scope.keyId}`, sk: `KEY#${idempotencyKey}` });

export type ClaimResult = { claimed: true } | { claimed: false; existing: IdempotencyItem | undefined };

/**
 * Claim a key for one run of a request: succeeds when the key is new, its item has expired,
 * or the request that held it released it or stopped renewing its lease (crashed).
 */
export async function claimKey(scope: IdempotencyScope, idempotencyKey: string, fingerprint: string, leaseId: string): Promise<ClaimResult> {
  const now = Date.now();
  const nowSeconds = Math.floor(now / 1000);
  const key = keyOf(scope, idempotencyKey);
  const claimed = await updateItem(IDEMPOTENCY_TABLE, key, {
    set: {
      state: 'in_flight',
      fingerprint,
      lease_id: leaseId,
      lease_until: now + config().idempotencyLeaseMs,
      ttl: nowSeconds + IDEMPOTENCY_WINDOW_SECONDS,
      created_at: nowSeconds,
    },
    remove: ['answer'],
    condition: 'attribute_not_exists(#pk) OR #ttl < :now_s OR (#state = :in_flight AND #lease_until < :now)',
    conditionValues: { ':now_s': nowSeconds, ':in_flight': 'in_flight', ':now': now },
  });
  if (claimed) return { claimed: true };
  return { claimed: false, existing: await getItem<IdempotencyItem>(IDEMPOTENCY_TABLE, key, true) };
}

/** Whether an item read back still holds its key (not expired, not a lapsed or released claim). */
export function isLive(item: IdempotencyItem, now = Date.now()): boolean {
  if (item.ttl < Math.floor(now / 1000)) return false;
  return item.state === 'done' || item.lease_until >= now;
}

const HELD = '#lease_id = :lease AND #state = :in_flight';

/** Extend a claim; false when it is no longer this request's. */
export async function renewLease(scope: IdempotencyScope, idempotencyKey: string, leaseId: string): Promise<boolean> {
  const renewed = await updateItem(IDEMPOTENCY_TABLE, keyOf(scope, idempotencyKey), {
    set: { lease_until: Date.now() + config().idempotencyLeaseMs },
    condition: HELD,
    conditionValues: { ':lease': leaseId, ':in_flight': 'in_flight' },
  });
  return renewed !== undefined;
}

/** Store the answer of the request that holds the claim; false when it no longer holds it. */
export async function storeAnswer(scope: IdempotencyScope, idempotencyKey: string, leaseId: string, answer: StoredAnswer): Promise<boolean> {
  const stored = await updateItem(IDEMPOTENCY_TABLE, keyOf(scope, idempotencyKey), {
    set: { state: 'done', answer },
    condition: HELD,
    conditionValues: { ':lease': leaseId, ':in_flight': 'in_flight' },
  });
  return stored !== undefined;
}

/** Give the key up (the request failed in a way a retry may fix): the next request with it runs. */
export async function releaseKey(scope: IdempotencyScope, idempotencyKey: string, leaseId: string): Promise<void> {
  await updateItem(IDEMPOTENCY_TABLE, keyOf(scope, idempotencyKey), {
    set: { lease_until: 0 },
    condition: HELD,
    conditionValues: { ':lease': leaseId, ':in_flight': 'in_flight' },
  });
}

/**
 * The two ways a provider's batch API can fail a step (./types.ts says what the framework does
 * with each): transient (tried again later) or permanent (the provider's own refusal).
 */

/** Network failure, timeout, 408, 429 or 5xx: the step is tried again later, with backoff. */
export class NativeBatchUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NativeBatchUnavailable';
  }
}

/** The provider refused (a 4xx other than 408/429, a missing setting): permanent, in the provider's words. */
export class NativeBatchRejected extends Error {
  constructor(
    message: string,
    /** Error code for the batch's `errors.data` (the provider's own code when it gave one). */
    readonly code: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = 'NativeBatchRejected';
  }
}

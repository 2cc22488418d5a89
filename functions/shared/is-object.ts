/** Whether a parsed JSON value is an object: not null, not a list. */
export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

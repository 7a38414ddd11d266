/** How an API key looks and how it is stored: the API-keys module mints them, its verifier looks them up. */
import { hash as oneShotHash } from 'node:crypto';

export const API_KEY_PREFIX = 'wfa_';

/** One-shot `hash` (Node ≥ 20.12): a quarter of `createHash(…).update(…).digest(…)`'s CPU, per request. */
export const hashApiKey = (key: string) => oneShotHash('sha256', key, 'hex');

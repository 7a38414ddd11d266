/**
 * Owns registering our custom search attributes (temporal/shared.ts `SEARCH_ATTRIBUTES`) on
 * a Temporal namespace through the operator service: the worker at start (src/main.ts),
 * and `npm start` for a server it does not run itself (its own dev server gets them as flags).
 * In src/ because the service needs it; scripts/ may import src/, never the reverse.
 */
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { SEARCH_ATTRIBUTES } from '../temporal/shared';

const GRPC_ALREADY_EXISTS = 6;

type IndexedValueType = NonNullable<ReturnType<typeof encodeSearchAttributeIndexedValueType>>;

/**
 * Registers every custom search attribute on `namespace` that is not there yet. For an
 * external server (TEMPORAL_ADDRESS): the dev servers we start get them as flags. Throws if
 * an attribute exists with another type, since workflows would then fail to start.
 */
export async function ensureSearchAttributes(target: Connection | string, namespace: string): Promise<void> {
  const connection = typeof target === 'string' ? await Connection.connect({ address: target }) : target;
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const missing: Record<string, IndexedValueType> = {};
    for (const key of SEARCH_ATTRIBUTES) {
      const want = encodeSearchAttributeIndexedValueType(key.type);
      if (want === undefined) throw new Error(`unknown search attribute type ${key.type}`);
      const have = existing.customAttributes?.[key.name] ?? existing.systemAttributes?.[key.name];
      if (have === undefined || have === null) missing[key.name] = want;
      else if (have !== want) throw new Error(`search attribute ${key.name} exists with another type (${have})`);
    }
    if (Object.keys(missing).length === 0) return;
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
    } catch (err) {
      // Another process (a second worker or API starting alongside) may have won the race.
      if (!(isGrpcServiceError(err) && err.code === GRPC_ALREADY_EXISTS)) throw err;
    }
  } finally {
    if (typeof target === 'string') await connection.close();
  }
}

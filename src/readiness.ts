/** The readiness checks behind /readyz and the analytics system_health. */
import type { Services } from './services';
import { isTemporalReachable } from './temporal-client';

export async function readinessChecks(s: Services): Promise<Record<string, 'ok' | 'unavailable'>> {
  const within = <T>(p: Promise<T>, ms: number) =>
    Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);
  const [postgres, redis, temporal] = await Promise.all([
    within(s.orm.em.getConnection().execute('select 1'), 2000).then(
      () => true,
      () => false,
    ),
    within(s.redis.ping(), 2000).then(
      () => true,
      () => false,
    ),
    isTemporalReachable(s.temporal.connection),
  ]);
  const state = (ok: boolean): 'ok' | 'unavailable' => (ok ? 'ok' : 'unavailable');
  return { postgres: state(postgres), redis: state(redis), temporal: state(temporal) };
}

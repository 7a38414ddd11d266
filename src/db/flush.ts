/**
 * `flushOrConflict` flushes and turns a unique-constraint violation into the resource's
 * 409: uniqueness (a name or URL per organization) is enforced by the database index, so
 * two concurrent creates cannot both pass a check-then-insert.
 */
import { type EntityManager, UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import type { DomainError } from '../errors';

export async function flushOrConflict(em: EntityManager, conflict: () => DomainError): Promise<void> {
  try {
    await em.flush();
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw conflict();
    throw err;
  }
}

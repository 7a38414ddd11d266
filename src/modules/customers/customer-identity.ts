/**
 * Owns changes of a customer's identity that the channel reports without the customer writing
 * (WhatsApp `system` notices): never a message, nothing is sent back, and nothing answers a
 * waiting form.
 *
 * - `user_changed_number`: the customer moves to the new id (`external_id`), the same row
 *   with its history, conversations and running executions; the previous ids are kept in
 *   `metadata.previous_external_ids`. When the new id is already another customer of the
 *   organization, nothing moves (the two are not merged) and the notice is only kept.
 * - any other notice (`user_identity_changed`: the security code changed): kept in
 *   `metadata.identity_changes`, the identity itself in `metadata.whatsapp_identity`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

export interface IdentityChange {
  organizationId: string;
  channel: string;
  externalId: string;
  kind: string;
  newExternalId?: string;
  identity?: string;
  at: Date;
}

/** Applies the change; returns the customer's id, or null when no such customer exists. */
export async function applyIdentityChange(em: EntityManager, change: IdentityChange): Promise<string | null> {
  const conn = em.getConnection();
  const note = JSON.stringify({ type: change.kind, at: change.at.toISOString(), ...(change.newExternalId ? { new_external_id: change.newExternalId } : {}) });
  const [moved] =
    change.newExternalId && change.kind === 'user_changed_number'
      ? await conn.execute<Array<{ id: string }>>(
          `update customers c set external_id = ?,
             metadata = c.metadata || jsonb_build_object('previous_external_ids',
               coalesce(c.metadata->'previous_external_ids', '[]'::jsonb) || jsonb_build_array(jsonb_build_object('external_id', c.external_id, 'changed_at', ?::text))),
             updated_at = now()
           where c.organization_id = ? and c.channel = ? and c.external_id = ?
             and not exists (select 1 from customers o where o.organization_id = c.organization_id and o.channel = c.channel and o.external_id = ?)
           returning c.id`,
          [change.newExternalId, change.at.toISOString(), change.organizationId, change.channel, change.externalId, change.newExternalId],
        )
      : [];
  const external = moved ? change.newExternalId! : change.externalId;
  const [kept] = await conn.execute<Array<{ id: string }>>(
    `update customers c set
       metadata = c.metadata || jsonb_build_object('identity_changes', coalesce(c.metadata->'identity_changes', '[]'::jsonb) || jsonb_build_array(?::jsonb))
         || (case when ?::text is null then '{}'::jsonb else jsonb_build_object('whatsapp_identity', jsonb_build_object('identity', ?::text, 'changed_at', ?::text)) end),
       updated_at = now()
     where c.organization_id = ? and c.channel = ? and c.external_id = ?
     returning c.id`,
    [note, change.identity ?? null, change.identity ?? null, change.at.toISOString(), change.organizationId, change.channel, external],
  );
  return kept?.id ?? null;
}

import { Migration } from '@mikro-orm/migrations';

/**
 * A version per organization of what an inbound message can start: its active `message`
 * triggers and its active workflows (src/modules/inbound/message-targets.ts).
 *
 * Why: the API keeps those rows in memory so that `POST /v1/messages` does not read them
 * for every message (docs/performance.md, "Inbound messages", item 17). The message's write
 * statement checks that the version it was planned with is still the organization's
 * (`check_message_target_version`), and fails with SQLSTATE `WAT01` when it is not; the
 * API then reads the rows again and writes again. So a message never acts on rows older
 * than its statement's start, whichever process changed them, with no cross-process signal.
 *
 * The version is bumped by deferred constraint triggers, so the row is locked only while
 * the commit runs them, after every other lock of the transaction (no new deadlock between
 * two transactions that change the same organization's workflows in different orders). An
 * UPDATE bumps it only when a column a message plan uses changed (`update of` + `when`):
 * the counters the executions keep on the same rows (`execution_count`, `success_count`,
 * `last_triggered`) never do. A workflow's configuration only changes with its `revision`
 * (WorkflowService), so the revision stands for it and the (possibly large) jsonb is never
 * compared.
 */
export class Migration20261130000200_message_target_versions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table message_target_versions (
        organization_id text primary key references organizations(id),
        version bigint not null
      );

      create function bump_message_target_version() returns trigger language plpgsql as $$
      begin
        insert into message_target_versions as v (organization_id, version)
        values (coalesce(new.organization_id, old.organization_id), 1)
        on conflict (organization_id) do update set version = v.version + 1;
        return null;
      end $$;

      create constraint trigger workflows_message_targets_insert_delete after insert or delete on workflows
        deferrable initially deferred for each row execute function bump_message_target_version();
      create constraint trigger workflows_message_targets_update after update of status, channel, name, revision, configuration, deleted_at on workflows
        deferrable initially deferred for each row
        when ((old.status, old.channel, old.name, old.revision, old.deleted_at)
              is distinct from (new.status, new.channel, new.name, new.revision, new.deleted_at))
        execute function bump_message_target_version();

      create constraint trigger triggers_message_targets_insert_delete after insert or delete on triggers
        deferrable initially deferred for each row execute function bump_message_target_version();
      create constraint trigger triggers_message_targets_update after update of type, status, channel, workflow_id, configuration, deleted_at on triggers
        deferrable initially deferred for each row
        when ((old.type, old.status, old.channel, old.workflow_id, old.configuration, old.deleted_at)
              is distinct from (new.type, new.status, new.channel, new.workflow_id, new.configuration, new.deleted_at))
        execute function bump_message_target_version();

      -- Called by the message's write statement with the version its plan was read at.
      create function check_message_target_version(org text, seen bigint) returns boolean language plpgsql stable as $$
      begin
        if coalesce((select version from message_target_versions where organization_id = org), 0) <> seen then
          raise exception 'the organization''s message triggers or workflows changed' using errcode = 'WAT01';
        end if;
        return true;
      end $$;
    `);
  }
}

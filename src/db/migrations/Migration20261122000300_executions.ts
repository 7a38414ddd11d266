import { Migration } from '@mikro-orm/migrations';

/**
 * Executions and what they touch: customers, the conversation transcript (inbound and
 * outbound messages), execution steps, knowledge bases and their articles.
 */
export class Migration20261122000300_executions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table customers (
        id text primary key,
        organization_id text not null references organizations(id),
        channel text not null,
        external_id text not null,
        name text,
        metadata jsonb not null default '{}'::jsonb,
        message_count integer not null default 0,
        first_seen_at timestamptz not null default now(),
        last_message_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        unique (organization_id, channel, external_id)
      );
      create index customers_org_list_idx on customers (organization_id, created_at desc, id desc);

      create table executions (
        id text primary key,
        organization_id text not null references organizations(id),
        workflow_id text not null references workflows(id),
        revision integer not null,
        trigger_id text,
        customer_id text references customers(id),
        channel text not null,
        status text not null check (status in ('running', 'success', 'failed', 'cancelled')),
        input jsonb not null default '{}'::jsonb,
        output jsonb,
        error_type text check (error_type in ('timeout', 'api_error', 'validation_error')),
        error_message text,
        started_at timestamptz not null default now(),
        completed_at timestamptz,
        duration_ms integer,
        retry_of text references executions(id),
        message_id text,
        waiting_node_id text,
        temporal_started_at timestamptz
      );
      create index executions_workflow_idx on executions (organization_id, workflow_id, started_at desc, id desc);
      create index executions_waiting_idx on executions (organization_id, customer_id, channel) where status = 'running' and waiting_node_id is not null;
      create index executions_unstarted_idx on executions (started_at) where temporal_started_at is null and status = 'running';

      create table execution_steps (
        id text primary key,
        execution_id text not null references executions(id),
        organization_id text not null,
        node_id text not null,
        type text not null,
        status text not null,
        started_at timestamptz not null,
        completed_at timestamptz,
        duration_ms integer,
        input jsonb not null default '{}'::jsonb,
        output jsonb not null default '{}'::jsonb,
        error_type text,
        error_message text,
        unique (execution_id, node_id)
      );

      create table messages (
        id text primary key,
        organization_id text not null references organizations(id),
        customer_id text not null references customers(id),
        channel text not null,
        direction text not null check (direction in ('inbound', 'outbound')),
        text text not null,
        metadata jsonb not null default '{}'::jsonb,
        execution_id text,
        node_id text,
        dedupe_key text unique,
        language text,
        -- Inbound replies routed to a waiting execution: set once the signal is accepted.
        delivered_at timestamptz,
        created_at timestamptz not null default now()
      );
      create index messages_undelivered_idx on messages (created_at) where direction = 'inbound' and execution_id is not null and delivered_at is null;
      create index messages_customer_idx on messages (customer_id, created_at desc, id desc);
      create index messages_org_created_idx on messages (organization_id, created_at);

      create table knowledge_bases (
        id text primary key,
        organization_id text not null references organizations(id),
        name text not null,
        description text not null default '',
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        deleted_at timestamptz
      );
      create unique index knowledge_bases_org_name_uniq on knowledge_bases (organization_id, name) where deleted_at is null;

      create table knowledge_base_articles (
        id text primary key,
        knowledge_base_id text not null references knowledge_bases(id),
        organization_id text not null,
        title text not null,
        content text not null,
        search_vector tsvector generated always as (
          setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', content), 'B')
        ) stored,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index knowledge_base_articles_kb_idx on knowledge_base_articles (knowledge_base_id, created_at desc);
      create index knowledge_base_articles_search_idx on knowledge_base_articles using gin (search_vector);
    `);
  }
}

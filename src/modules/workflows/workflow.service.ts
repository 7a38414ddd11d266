/**
 * Owns the workflow lifecycle: create (draft), update (a configuration change is a new
 * revision), soft delete, activate (validates the configuration first) and deactivate.
 * Every query is scoped to the caller's organization; another organization's workflow is
 * simply not found.
 */
import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import { conflict, invalid, notFound } from '../../errors';
import { type Page, offsetOf } from '../../http/pagination';
import { flushOrConflict } from '../../db/flush';
import { type HotPool, hotQuery } from '../../db/hot-query';
import { isoMillisSql } from '../../db/json-sql';
import { JsonText } from '../../http/json-text';
import { successRateSql } from '../metrics/execution-metrics';
import { newId } from '../../ids';
import { Workflow, WorkflowRevision } from './workflow.entity';
import { parseInput } from '../../http/validation';
import { z } from '../../http/zod';
import { type Channel, classifyWorkflowIssue, WorkflowConfiguration, type WorkflowStatus } from './workflow.schemas';

export interface WorkflowListFilter {
  status?: WorkflowStatus;
  channel?: Channel;
  search?: string;
}

/**
 * `GET /v1/workflows/{id}`'s whole answer, `{"data": WorkflowDetail}`, as JSON text built by
 * PostgreSQL in the one statement that reads the row. The row is never parsed into JS
 * values (twelve column parsers, two dates, the configuration's JSON) nor serialized again:
 * on the hottest read that was a fifth of the API's CPU per request
 * (docs/performance.md). Each field is the one `toWorkflowOut` would give: timestamps as
 * `toISOString()` does (UTC, milliseconds truncated like the pg driver's dates),
 * `success_rate` as `successRatio` computes it (float8 arithmetic, ties rounded up; checked
 * against it pair by pair in test/integration/resources/workflows-read.cases.ts). The configuration is
 * jsonb's own text: the same JSON value, spaced differently. A named statement: each pooled
 * connection parses and plans it once; the explicit columns keep it valid when a migration
 * adds some.
 */
const READ_WORKFLOW_JSON = {
  name: 'workflows.read-json',
  text: `select '{"data":' || json_build_object(
      'id', id, 'name', name, 'description', description, 'status', status, 'channel', channel, 'channel_connection_id', channel_connection_id,
      'created_at', ${isoMillisSql('created_at')}, 'updated_at', ${isoMillisSql('updated_at')},
      'execution_count', execution_count,
      'success_rate', ${successRateSql('success_count', 'failure_count')},
      'configuration', configuration, 'revision', revision)::text || '}' as json
      from workflows where id = $1 and organization_id = $2 and deleted_at is null`,
};

/** A workflow's channel connection must be a live connection of the organization on the workflow's channel. */
async function checkChannelConnection(em: EntityManager, organizationId: string, channel: string, id: string): Promise<void> {
  const [row] = await em
    .getConnection()
    .execute<Array<{ channel: string }>>('select channel from channel_connections where id = ? and organization_id = ? and deleted_at is null', [id, organizationId]);
  if (!row) throw invalid(`channel connection ${id} not found`, 'channel_connection_id');
  if (row.channel !== channel) throw invalid(`channel connection ${id} serves ${row.channel}, not ${channel}`, 'channel_connection_id');
}

const workflowNotFound = () => notFound('WORKFLOW_NOT_FOUND', 'Workflow');
const nameTaken = (name: string) => conflict('WORKFLOW_ALREADY_EXISTS', `A workflow named "${name}" already exists`, 'name');

/** Escapes LIKE wildcards so a search for "50%" matches the text "50%". */
const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The hottest read, for answering only: the answer's JSON text, no EntityManager involved (`READ_WORKFLOW_JSON`). */
export async function readWorkflowAnswer(pool: HotPool, organizationId: string, id: string): Promise<JsonText> {
  const [row] = await hotQuery<{ json: string }>(pool, READ_WORKFLOW_JSON, [id, organizationId]);
  if (!row) throw workflowNotFound();
  return new JsonText(row.json);
}

export class WorkflowService {
  constructor(private readonly em: EntityManager) {}

  async list(organizationId: string, filter: WorkflowListFilter, page: Page) {
    const where: Record<string, unknown> = { organizationId, deletedAt: null };
    if (filter.status) where.status = filter.status;
    if (filter.channel) where.channel = filter.channel;
    if (filter.search) {
      const pattern = likePattern(filter.search);
      where.$or = [{ name: { $ilike: pattern } }, { description: { $ilike: pattern } }];
    }
    const [items, total] = await this.em.findAndCount(Workflow, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.limit,
      offset: offsetOf(page),
      // The list never shows configurations; leave the biggest column in the database.
      exclude: ['configuration'],
    });
    return { items, total };
  }

  /** Managed entity, for changes that are flushed. */
  async get(organizationId: string, id: string): Promise<Workflow> {
    const wf = await this.em.findOne(Workflow, { id, organizationId, deletedAt: null });
    if (!wf) throw workflowNotFound();
    return wf;
  }

  async create(
    organizationId: string,
    input: { name: string; description?: string; channel: Channel; channel_connection_id?: string | null; configuration?: WorkflowConfiguration },
  ): Promise<Workflow> {
    if (input.channel_connection_id) await checkChannelConnection(this.em, organizationId, input.channel, input.channel_connection_id);
    const wf = this.em.create(Workflow, {
      id: newId('workflow'),
      organizationId,
      name: input.name,
      description: input.description ?? '',
      channel: input.channel,
      channelConnectionId: input.channel_connection_id ?? null,
      status: 'draft',
      configuration: input.configuration ?? null,
      revision: input.configuration ? 1 : 0,
    });
    if (input.configuration) this.addRevision(wf, input.configuration);
    await flushOrConflict(this.em, () => nameTaken(input.name));
    return wf;
  }

  async update(
    organizationId: string,
    id: string,
    input: { name?: string; description?: string; channel_connection_id?: string | null; configuration?: WorkflowConfiguration },
  ): Promise<Workflow> {
    return this.em.transactional(async (em) => {
      const wf = await em.findOne(Workflow, { id, organizationId, deletedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!wf) throw workflowNotFound();
      if (input.channel_connection_id !== undefined) {
        if (input.channel_connection_id !== null) await checkChannelConnection(em as EntityManager, organizationId, wf.channel, input.channel_connection_id);
        wf.channelConnectionId = input.channel_connection_id;
      }
      if (input.name !== undefined) wf.name = input.name;
      if (input.description !== undefined) wf.description = input.description;
      if (input.configuration !== undefined && JSON.stringify(input.configuration) !== JSON.stringify(wf.configuration)) {
        wf.configuration = input.configuration;
        wf.revision += 1;
        new WorkflowService(em).addRevision(wf, input.configuration);
      }
      wf.updatedAt = new Date();
      await flushOrConflict(em, () => nameTaken(wf.name));
      return wf;
    });
  }

  async delete(organizationId: string, id: string): Promise<void> {
    const wf = await this.get(organizationId, id);
    const now = new Date();
    wf.deletedAt = now;
    wf.updatedAt = now;
    if (wf.status === 'active') {
      wf.status = 'inactive';
      wf.deactivatedAt = now;
    }
    await this.em.flush();
  }

  async activate(organizationId: string, id: string): Promise<Workflow> {
    const wf = await this.get(organizationId, id);
    if (!wf.configuration) {
      throw invalid('A workflow needs a configuration with nodes before it can be activated', 'configuration', 'INVALID_WORKFLOW_CONFIG');
    }
    // Stored configurations were valid when written; rules may have tightened since.
    parseInput(z.object({ configuration: WorkflowConfiguration }), { configuration: wf.configuration }, classifyWorkflowIssue);
    // Idempotent: activating an active workflow keeps its first activated_at.
    if (wf.status !== 'active') {
      wf.status = 'active';
      wf.activatedAt = new Date();
      wf.updatedAt = wf.activatedAt;
      await this.em.flush();
    }
    return wf;
  }

  async deactivate(organizationId: string, id: string): Promise<Workflow> {
    const wf = await this.get(organizationId, id);
    if (wf.status !== 'inactive') {
      wf.status = 'inactive';
      wf.deactivatedAt = new Date();
      wf.updatedAt = wf.deactivatedAt;
      await this.em.flush();
    }
    return wf;
  }

  private addRevision(wf: Workflow, configuration: WorkflowConfiguration) {
    this.em.create(WorkflowRevision, { id: newId('workflowRevision'), workflowId: wf.id, revision: wf.revision, configuration });
  }
}

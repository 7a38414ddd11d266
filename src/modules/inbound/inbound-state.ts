/**
 * The inbound module's own state, built once per API process (src/app.ts): the in-memory
 * targets of inbound messages, and the batched start stamps and the queue leases of the
 * executions they start.
 */
import { FairLimiter, SHARED_WINDOW_MS } from '../../fair-limiter';
import type { Services } from '../../services';
import { QueuedStartLeases } from '../executions/queued-start-leases';
import { createStartStamps, type StartStamps } from '../executions/start-stamps';
import { MessageTargetsCache } from './message-targets';

export interface InboundState {
  /** Inbound messages' triggers, workflows and customers, kept in memory (message-targets.ts). */
  messageTargets: MessageTargetsCache;
  /** Batched `temporal_started_at` stamps of inbound messages' starts (executions/start-stamps.ts). */
  startStamps: StartStamps;
  /** Leases on the executions whose start waits for a slot (executions/queued-start-leases.ts). */
  queuedStarts: QueuedStartLeases;
  /**
   * Admits inbound messages: while other organizations' messages arrive, one organization
   * records at most INBOUND_MESSAGES_PER_ORGANIZATION at once (no bound when it is alone).
   * A flood's 20 requests in flight were 20 busy PostgreSQL backends, each a process that
   * took its slice of both cores beside the worker and the others' requests. While
   * INBOUND_STARTS_WAITING_PER_ORGANIZATION of the organization's starts already wait for a
   * slot among the API's Temporal calls (`BackgroundTasks.waitingCalls`: they wait only
   * while Temporal is busy, src/adaptive-capacity.ts), its next message waits to be recorded
   * until one of them leaves: recording faster than its conversations start would only
   * lengthen its backlog, and the recording's CPU is what the others' conversations needed.
   */
  intake: FairLimiter;
}

export type InboundServices = Services & InboundState;

export function createInboundState(services: Services): InboundState {
  const startsAhead = services.config.INBOUND_STARTS_WAITING_PER_ORGANIZATION;
  const intake = new FairLimiter(Number.POSITIVE_INFINITY, {
    share: services.config.INBOUND_MESSAGES_PER_ORGANIZATION,
    windowMs: SHARED_WINDOW_MS,
    behind: (organizationId) => services.background.waitingCalls(organizationId) >= startsAhead,
  });
  services.background.onAdmitted = () => intake.recheck();
  return {
    messageTargets: new MessageTargetsCache(services.hotPool),
    startStamps: createStartStamps(services.hotPool, services.logger),
    queuedStarts: new QueuedStartLeases(services.hotPool, services.logger),
    intake,
  };
}

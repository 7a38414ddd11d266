/**
 * The inbound module's own state, built once per API process (src/app.ts): the in-memory
 * targets of inbound messages and the batched start stamps of the executions they start.
 */
import type { Services } from '../../services';
import { StartStamps } from '../executions/start-stamps';
import { MessageTargetsCache } from './message-targets';

export interface InboundState {
  /** Inbound messages' triggers, workflows and customers, kept in memory (message-targets.ts). */
  messageTargets: MessageTargetsCache;
  /** Batched `temporal_started_at` stamps of inbound messages' starts (executions/start-stamps.ts). */
  startStamps: StartStamps;
}

export type InboundServices = Services & InboundState;

export function createInboundState(services: Services): InboundState {
  return { messageTargets: new MessageTargetsCache(services.hotPool), startStamps: new StartStamps(services.hotPool, services.logger) };
}

/**
 * Owns the links from API responses to the Temporal UI (`temporal_ui_url`): with
 * TEMPORAL_UI_URL set, an execution, report, export, replay or dry run links to its run's page.
 * The link names the workflow id only: the UI opens its latest run, so after a reset (a new
 * run of the same workflow id) it still leads to the run that decides the record.
 */
import { z } from './http/zod';
import type { Config } from './config';

type UiConfig = Pick<Config, 'TEMPORAL_UI_URL' | 'TEMPORAL_NAMESPACE'>;

/** `{temporal_ui_url}` to spread into a response; empty when TEMPORAL_UI_URL is unset. */
export function temporalUiLink(config: UiConfig, temporalWorkflowId: string): { temporal_ui_url?: string } {
  if (!config.TEMPORAL_UI_URL) return {};
  const base = config.TEMPORAL_UI_URL.replace(/\/+$/, '');
  return {
    temporal_ui_url: `${base}/namespaces/${encodeURIComponent(config.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(temporalWorkflowId)}`,
  };
}

/** The response field, in every schema that carries it. */
export const TemporalUiUrlOut = z
  .string()
  .optional()
  .openapi({
    description: "The run's page in the Temporal UI (its latest run); present only when the service is configured with TEMPORAL_UI_URL",
    example: 'http://localhost:8233/namespaces/default/workflows/exec_4eC39HqLyjWDarjtT1zd',
  });

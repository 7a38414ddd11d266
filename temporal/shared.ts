/**
 * Owns the Temporal names shared by workflows, activities, the worker, the API and the
 * dev-server scripts: our custom search attributes. Workflow code imports this file, so it
 * imports nothing but @temporalio/common (no Node built-ins, no src/, no ORM).
 */
import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';

/** `SearchAttributeKey` is not re-exported from @temporalio/common's index; derive it. */
export type KeywordSearchAttributeKey = ReturnType<typeof defineSearchAttributeKey<typeof SearchAttributeType.KEYWORD>>;

/** Search attributes an operator uses in the Temporal UI to find an execution by our ids. */
export const SearchAttributeKeys = {
  organizationId: defineSearchAttributeKey('WfaOrganizationId', SearchAttributeType.KEYWORD),
  workflowId: defineSearchAttributeKey('WfaWorkflowId', SearchAttributeType.KEYWORD),
  triggerId: defineSearchAttributeKey('WfaTriggerId', SearchAttributeType.KEYWORD),
  customerId: defineSearchAttributeKey('WfaCustomerId', SearchAttributeType.KEYWORD),
  channel: defineSearchAttributeKey('WfaChannel', SearchAttributeType.KEYWORD),
  /** Data exports (`export:<id>`) and custom reports (`report:<id>`). */
  exportId: defineSearchAttributeKey('WfaExportId', SearchAttributeType.KEYWORD),
  reportId: defineSearchAttributeKey('WfaReportId', SearchAttributeType.KEYWORD),
} as const;

/**
 * Every custom search attribute as a `{name, type}` key: the shape
 * `TestWorkflowEnvironment.createLocal({server: {searchAttributes}})` takes and that
 * `searchAttributeCliArgs` turns into dev-server flags. The server must know them before
 * a workflow is started with them, so every server we start registers this whole list.
 */
export const SEARCH_ATTRIBUTES: readonly KeywordSearchAttributeKey[] =
  Object.values(SearchAttributeKeys);

/** `--search-attribute Name=Keyword` pairs for `temporal server start-dev`. */
export function searchAttributeCliArgs(): string[] {
  // The CLI spells types as the server's metadata does ("Keyword"), not as the SDK ("KEYWORD").
  return SEARCH_ATTRIBUTES.flatMap((key) => [
    '--search-attribute',
    `${key.name}=${TypedSearchAttributes.toMetadataType(key.type)}`,
  ]);
}

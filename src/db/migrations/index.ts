/**
 * The committed migrations, in order. Listed explicitly (instead of a folder glob) so
 * they load the same way under tsx, jest and a compiled build. New migrations go last.
 */
import { Migration20261122000001_foundation } from './Migration20261122000001_foundation';
import { Migration20261122000002_events } from './Migration20261122000002_events';

export const migrationsList = [
  { name: 'Migration20261122000001_foundation', class: Migration20261122000001_foundation },
  { name: 'Migration20261122000002_events', class: Migration20261122000002_events },
];

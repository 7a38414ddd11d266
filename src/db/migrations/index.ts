/**
 * The committed migrations, in order. Listed explicitly (instead of a folder glob) so
 * they load the same way under tsx, jest and a compiled build. New migrations go last.
 */
import { Migration20261122000001_foundation } from './Migration20261122000001_foundation';

export const migrationsList = [
  { name: 'Migration20261122000001_foundation', class: Migration20261122000001_foundation },
];

/**
 * The columns exports and reports share as records of a generated file: their type, the
 * base class that gives a new record their defaults, its abstract entity schema (no table
 * of its own: each kind's schema extends it, so the column names are those of each table)
 * and which of them a new record may leave out. Apart from file-records.ts so that the
 * entities import nothing but the ORM.
 */
import { BigIntType, EntitySchema } from '@mikro-orm/core';

/** The columns every generated-file record has. */
export interface FileRecord {
  id: string;
  organizationId: string;
  status: string;
  fileKey: string | null;
  fileSize: number | null;
  errorMessage: string | null;
  createdAt: Date;
  completedAt: Date | null;
  expiresAt: Date | null;
}

/** The file columns a new record may leave out (for the entities' `[OptionalProps]`). */
export type OptionalFileColumns = 'fileKey' | 'fileSize' | 'errorMessage' | 'createdAt' | 'completedAt' | 'expiresAt';

/**
 * The file columns (besides id, organization and status, which each table declares) with
 * a new record's values. The kinds' entity classes extend it; MikroORM maps a parent class
 * only through an entity schema of its own, hence `FileColumnsSchema`.
 */
export class FileColumns {
  fileKey: string | null = null;
  fileSize: number | null = null;
  errorMessage: string | null = null;
  createdAt: Date = new Date();
  completedAt: Date | null = null;
  expiresAt: Date | null = null;
}

/** Abstract and without a discriminator: no table, its properties are mapped in each child's table. */
export const FileColumnsSchema = new EntitySchema<FileColumns>({
  class: FileColumns,
  abstract: true,
  properties: {
    fileKey: { type: 'string', fieldName: 'file_key', nullable: true },
    fileSize: { type: new BigIntType('number'), fieldName: 'file_size', nullable: true },
    errorMessage: { type: 'string', fieldName: 'error_message', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    completedAt: { type: 'Date', fieldName: 'completed_at', nullable: true },
    expiresAt: { type: 'Date', fieldName: 'expires_at', nullable: true },
  },
});

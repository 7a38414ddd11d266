/**
 * The columns exports and reports share as records of a generated file: their type, their
 * entity-schema properties and which a new record may leave out. Apart from
 * file-records.ts so that the entities import nothing but the ORM.
 */
import { BigIntType } from '@mikro-orm/core';

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

/** The entity-schema properties of those columns (besides id, organization and status, which each table declares). */
export const fileColumns = {
  fileKey: { type: 'string', fieldName: 'file_key', nullable: true },
  fileSize: { type: new BigIntType('number'), fieldName: 'file_size', nullable: true },
  errorMessage: { type: 'string', fieldName: 'error_message', nullable: true },
  createdAt: { type: 'Date', fieldName: 'created_at' },
  completedAt: { type: 'Date', fieldName: 'completed_at', nullable: true },
  expiresAt: { type: 'Date', fieldName: 'expires_at', nullable: true },
} as const;

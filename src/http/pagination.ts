/** Owns page/limit parsing and the list envelope's `pagination` object. */
import { z } from './zod';
import { queryInt } from './validation';

export const paginationQuery = {
  page: queryInt(1, 1_000_000).optional().default(1).openapi({ description: 'Page number, from 1', example: 1 }),
  limit: queryInt(1, 100).optional().default(20).openapi({ description: 'Items per page, 1 to 100', example: 20 }),
};

export interface Page {
  page: number;
  limit: number;
}

export const offsetOf = (p: Page) => (p.page - 1) * p.limit;

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  pages: number;
}

export function paginate<T>(data: T[], p: Page, total: number): { data: T[]; pagination: Pagination } {
  return { data, pagination: { page: p.page, limit: p.limit, total, pages: Math.ceil(total / p.limit) } };
}

export const PaginationOut = z
  .object({ page: z.number().int(), limit: z.number().int(), total: z.number().int(), pages: z.number().int() })
  .openapi('Pagination');

/**
 * Owns the shape of the routes of a kind whose records produce a file in the background
 * (exports, reports): create (201, the record; its workflow writes the file), list (newest
 * first), status, and download (the file streamed or redirected to, src/modules/files/file-download.routes.ts).
 * Each kind supplies its paths, OpenAPI words, schemas and error codes (the contract's) and
 * a service answering the four; the scopes, tag and response envelopes are the same for all.
 */
import { PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { sendFile } from './file-download.routes';
import type { FileJobService } from './file-records';
import { ListQuery } from './file-records.schemas';

/** One OpenAPI tag for exports and reports. */
export const REPORTS_AND_EXPORTS_TAG = 'Analytics: reports and exports';

/** The words of one route: what tells this kind's route from the other kind's. */
type RouteWords = Pick<RouteDef, 'path' | 'operationId' | 'summary'>;

export interface FileJobRoutes<In extends z.ZodType, Out extends z.ZodType, Params extends z.ZodObject> {
  service: FileJobService<z.output<In>, z.output<Out>>;
  /** The record as the API answers it. */
  out: Out;
  /** The path parameters of status and download, and which of them is the record's id. */
  params: Params;
  idParam: keyof z.output<Params> & string;
  create: RouteWords & Pick<RouteDef, 'limits' | 'classify' | 'errors'> & { body: In };
  list: RouteWords;
  get: RouteWords & Pick<RouteDef, 'errors'>;
  download: RouteWords & Pick<RouteDef, 'description' | 'produces' | 'errors'>;
}

export function fileJobRoutes<In extends z.ZodType, Out extends z.ZodType, Params extends z.ZodObject>(
  kind: FileJobRoutes<In, Out, Params>,
): AnyRoute[] {
  const { service, out, params, idParam } = kind;
  const tag = REPORTS_AND_EXPORTS_TAG;
  const idOf = (p: z.output<Params>) => p[idParam] as string;
  return [
    defineRoute({
      method: 'post',
      ...kind.create,
      tag,
      scope: 'analytics:write',
      status: 201,
      response: z.object({ data: out }),
      async handler({ body, credential, claim }) {
        return { data: await service.create(credential.organizationId, body, claim) };
      },
      // The first try committed the record (its job started by the reconciler if that try did not) and died before its answer was stored.
      async resume({ credential, point }) {
        return { data: await service.get(credential.organizationId, point.record_id ?? '') };
      },
    }),
    defineRoute({
      method: 'get',
      ...kind.list,
      tag,
      scope: 'analytics:read',
      query: ListQuery,
      response: z.object({ data: z.array(out), pagination: PaginationOut }),
      async handler({ query, credential }) {
        return await service.list(credential.organizationId, query);
      },
    }),
    defineRoute({
      method: 'get',
      ...kind.get,
      tag,
      scope: 'analytics:read',
      params,
      response: z.object({ data: out }),
      async handler({ params: p, credential }) {
        return { data: await service.get(credential.organizationId, idOf(p)) };
      },
    }),
    defineRoute({
      method: 'get',
      ...kind.download,
      tag,
      scope: 'analytics:read',
      params,
      async handler({ params: p, credential, ctx }) {
        sendFile(ctx, await service.download(credential.organizationId, idOf(p)));
        return undefined;
      },
    }),
  ];
}

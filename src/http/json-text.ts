/**
 * An answer body that is already JSON text (built by PostgreSQL, say): sent as it is with
 * the JSON content type, instead of an object that Koa would serialize.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

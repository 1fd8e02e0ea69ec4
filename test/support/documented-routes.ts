import type Router from '@koa/router';

/** `/runs/:track_id` → `/runs/{track_id}` */
const openApiPath = (koaPath: string) => koaPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/**
 * The routes a router serves that its OpenAPI document does not describe, as `METHOD /path`:
 * every route a client can call must be in the document (HEAD, which Koa adds to GET, aside).
 */
export function undocumentedRoutes(router: Router, document: unknown): string[] {
  const paths = (document as { paths: Record<string, Record<string, unknown>> }).paths;
  const missing: string[] = [];
  for (const layer of router.stack) {
    const path = openApiPath(String(layer.path));
    for (const method of layer.methods.filter((m) => m !== 'HEAD'))
      if (!paths[path]?.[method.toLowerCase()]) missing.push(`${method} ${path}`);
  }
  return missing;
}

import fs from 'node:fs';
import path from 'node:path';
import type { Context, Middleware, Next } from 'koa';

/**
 * The interactive API reference every service serves at /docs: Swagger UI (swagger-ui-dist, from
 * node_modules, so it works offline) reading the service's own /openapi.json, with "Try it out"
 * sending real requests with the bearer key the reader enters. A page for people, not an
 * operation of the API: served by the platform's edge for every service (only the title differs),
 * not listed in the document (so no client, the Python SDK included, is generated for it).
 */
export const API_REFERENCE_PATH = '/docs';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
};
const INIT_SCRIPT = 'init.js';
const INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });\n`;

const distDir = () => path.dirname(require.resolve('swagger-ui-dist/package.json'));
const loaded = new Map<string, Buffer>();
const assetBody = (name: string) => {
  let body = loaded.get(name);
  if (!body) loaded.set(name, (body = fs.readFileSync(path.join(distDir(), name))));
  return body;
};

/** The reference's page (its scripts are files, not inline: no CSP has to allow inline code). */
function apiReferencePage(title: string): string {
  const asset = (name: string) => `${API_REFERENCE_PATH}/${name}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="${asset('swagger-ui.css')}">
</head>
<body>
<div id="reference"></div>
<script src="${asset('swagger-ui-bundle.js')}"></script>
<script src="${asset(INIT_SCRIPT)}"></script>
</body>
</html>
`;
}

/**
 * GET /docs: the page; GET /docs/<asset>: its script, stylesheet and start-up, each named here (no
 * other file of the package is reachable), cached by the browser for a day.
 */
export function apiReference(service: string): Middleware {
  const page = apiReferencePage(`${service} API reference`);
  return async function serveApiReference(ctx: Context, next: Next): Promise<void> {
    const prefix = `${API_REFERENCE_PATH}/`;
    const name =
      ctx.method !== 'GET'
        ? undefined
        : ctx.path === API_REFERENCE_PATH
          ? ''
          : ctx.path.startsWith(prefix)
            ? ctx.path.slice(prefix.length)
            : undefined;
    if (name === '') {
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = page;
      return;
    }
    if (name === INIT_SCRIPT) {
      ctx.type = 'application/javascript; charset=utf-8';
      ctx.body = INIT;
    } else if (name !== undefined && Object.hasOwn(ASSETS, name)) {
      ctx.type = ASSETS[name]!;
      ctx.body = assetBody(name);
    } else {
      await next();
      return;
    }
    ctx.set('Cache-Control', 'public, max-age=86400');
  };
}

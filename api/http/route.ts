import type { Context } from 'koa';

/** The route pattern @koa/router matched (`/v1/accounts/:id`), if one did. */
export const matchedRoute = (ctx: Context): string | undefined =>
  (ctx as Context & { _matchedRoute?: string })._matchedRoute;

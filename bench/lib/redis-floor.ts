/**
 * The floor any HTTP + Redis decision can reach on this machine: a bare Koa endpoint that parses
 * a JSON body, makes one Redis script call (INCRBY + EXPIRE of a counter, compared to a limit)
 * and answers JSON. Run as its own process by the quota bench; prints nothing.
 * Usage: tsx bench/lib/redis-floor.ts <port>
 */
import Koa from 'koa';
import { Redis } from 'ioredis';

const SCRIPT = `
local used = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], 3600)
return used <= tonumber(ARGV[2]) and 1 or 0`;

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  keyPrefix: 'bench-floor:',
});
const app = new Koa();
app.use(async (ctx) => {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
    subject: string;
    amount: number;
  };
  const allowed = await redis.eval(SCRIPT, 1, body.subject, body.amount, Number.MAX_SAFE_INTEGER);
  ctx.body = { allowed: allowed === 1 };
});
app.listen(Number(process.argv[2]), '127.0.0.1');

/* global process, console -- a Node script */
// Lints an OpenAPI document with Redocly's recommended rules; prints the problems as JSON.
// A separate process because @redocly/openapi-core is ESM-only and jest runs CommonJS.
import fs from 'node:fs';
import { createConfig, lintFromString } from '@redocly/openapi-core';

const source = fs.readFileSync(process.argv[2], 'utf8');
const config = await createConfig({ extends: ['recommended'] });
const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config });
console.log(
  JSON.stringify(
    problems.map((p) => ({
      severity: p.severity,
      rule: p.ruleId,
      message: p.message,
      where: p.location?.[0]?.pointer,
    })),
  ),
);

import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../../api/runs/openapi';
import type { Reply } from './support';

/**
 * Holds real answers of the runs service to its OpenAPI document: `conforms` checks that a
 * reply's status is documented for the operation and that its body matches the documented
 * schema, and remembers the operation, so a file can check at its end that it covered each one.
 */
export function runsConformance() {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(openApiDocument, 'runs');
  const checked = new Set<string>();

  function conforms(method: string, template: string, reply: Reply<unknown>): void {
    const responses = (
      openApiDocument.paths as Record<
        string,
        Record<string, { responses: Record<string, { content?: unknown }> }>
      >
    )[template]?.[method.toLowerCase()]?.responses;
    const response = responses?.[String(reply.status)];
    expect([method, template, reply.status, response !== undefined]).toEqual([
      method,
      template,
      reply.status,
      true,
    ]);
    if (response!.content === undefined) expect(reply.body).toBeNull();
    else {
      const pointer = ['paths', template, method.toLowerCase(), 'responses', String(reply.status)]
        .map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1'))
        .join('/');
      const validate = ajv.getSchema(`runs#/${pointer}/content/application~1json/schema`)!;
      expect([template, reply.status, validate(reply.body) ? null : validate.errors]).toEqual([
        template,
        reply.status,
        null,
      ]);
    }
    checked.add(`${method} ${template}`);
  }
  return { conforms, checked };
}

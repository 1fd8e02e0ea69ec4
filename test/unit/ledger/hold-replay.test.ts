import fs from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { payloadDataConverter } from '../../../platform/payload-codec';
import { testPayloadKeys } from '../../support/payload-keys';

jest.setTimeout(120_000);

const HISTORIES_DIR = path.join(__dirname, '../../histories/ledger');

/** Today's hold workflow code must replay every recorded history (safe reset and replay for operators). */
describe('ledger hold workflow determinism', () => {
  it('when recorded hold histories are replayed against the current code, then none diverges', async () => {
    const files = fs.readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(2);
    const histories = files.map((file) => ({
      workflowId: `replay/${file}`,
      history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, file), 'utf8'))),
    }));
    const results = [];
    for await (const result of Worker.runReplayHistories(
      {
        workflowsPath: require.resolve('../../../workflows/ledger'),
        dataConverter: payloadDataConverter(testPayloadKeys()),
      },
      histories,
    )) {
      results.push(result);
    }
    expect(results.map((r) => [r.workflowId, r.error])).toEqual(
      histories.map((h) => [h.workflowId, undefined]),
    );
  });
});

import { servedRoles } from '../../cli/healthcheck';

describe("the health check's reading of what its container serves", () => {
  it('takes every API from the image CMD, the named ones from a narrower command, the worker from its', () => {
    expect(servedRoles(['node', 'dist/api/main.js'])).toEqual(['ledger', 'runs', 'quota']);
    expect(servedRoles(['node', '/app/dist/api/main.js', 'ledger'])).toEqual(['ledger']);
    expect(servedRoles(['node', 'dist/api/main.js', 'runs', 'quota'])).toEqual(['runs', 'quota']);
    expect(servedRoles(['node', 'dist/worker/main.js'])).toEqual(['worker']);
    expect(servedRoles(['node', '--import', 'tsx', 'api/main.ts', 'quota'])).toEqual(['quota']);
  });

  it('knows nothing of another process, or of none: then every port that listens is asked', () => {
    expect(servedRoles(null)).toBeNull();
    expect(servedRoles(['/sbin/init'])).toBeNull();
    expect(servedRoles(['node', 'dist/cli/runs.js', 'metering', 'sync'])).toBeNull();
  });
});

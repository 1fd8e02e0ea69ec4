/**
 * One scrape of a service's /metrics (Prometheus text): `value(series, labels)` is the sum of that
 * series' samples whose labels include every one of `labels` (0 when there is none yet). Used by
 * the tests and the benches that read the services' counters and histograms.
 */
export async function scrapeMetrics(
  url: string,
): Promise<(series: string, labels?: Record<string, string>) => number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return (series, labels = {}) => {
    let sum = 0;
    for (const sample of text.matchAll(new RegExp(`^${series}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
      const have = `,${sample[1] ?? ''},`;
      if (Object.entries(labels).every(([k, v]) => have.includes(`,${k}="${v}",`)))
        sum += Number(sample[2]);
    }
    return sum;
  };
}

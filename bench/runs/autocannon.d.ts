// The few parts of autocannon's result the runs bench reads (the package ships no types).
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    overallRate?: number;
    duration?: number;
  }
  interface Result {
    latency: { p50: number; p99: number; max: number };
    '2xx': number;
    non2xx: number;
    errors: number;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}

import { describe, expect, it } from 'vitest';
import { limitingResource, unavailability, type ProbeSample } from './daytwo.ts';

const samples = (...xs: Array<[number, boolean]>): ProbeSample[] => xs.map(([atMs, ok]) => ({ atMs, ok }));

describe('unavailability', () => {
  it.each([
    { name: 'always answering', s: samples([0, true], [150, true]), seconds: 0, longest: 0, failed: 0 },
    {
      name: 'one outage, from the first failed probe to the next good one',
      s: samples([0, true], [150, false], [300, false], [450, true]),
      seconds: 0.3,
      longest: 0.3,
      failed: 2,
    },
    {
      name: 'two outages summed, the longest kept',
      s: samples([0, false], [150, true], [300, false], [450, false], [600, false], [750, true]),
      seconds: 0.6,
      longest: 0.45,
      failed: 4,
    },
    {
      name: 'ending on failures counts to the last probe',
      s: samples([0, true], [150, false], [300, false]),
      seconds: 0.15,
      longest: 0.15,
      failed: 2,
    },
    { name: 'no probe', s: samples(), seconds: 0, longest: 0, failed: 0 },
  ])('$name', ({ s, seconds, longest, failed }) => {
    const u = unavailability(s);
    expect(u.seconds).toBeCloseTo(seconds);
    expect(u.longestSeconds).toBeCloseTo(longest);
    expect(u.failed).toBe(failed);
    expect(u.probes).toBe(s.length);
  });
});

describe('limitingResource', () => {
  it.each([
    { host: 195, cores: 2, mem: 8000, starts: 'CPU (host CPU 98% of 2 cores' },
    { host: 120, cores: 2, mem: 8000, starts: 'neither (host CPU 60% of 2 cores' },
    { host: 199, cores: 2, mem: 1000, starts: 'memory (' },
    { host: 90, cores: 1, mem: 2048, starts: 'CPU (' },
  ])('host $host% of one core on $cores cores, $mem MiB available: $starts', ({ host, cores, mem, starts }) => {
    expect(limitingResource(host, cores, mem, 2048)).toMatch(new RegExp(`^${starts.replace(/[()]/g, '\\$&')}`));
  });
});

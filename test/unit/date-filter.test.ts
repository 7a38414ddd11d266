import { dateFilter, resolvePeriod } from '../../src/modules/metrics/execution-metrics';

describe('date filters', () => {
  it('treats a date-only end_date as the whole day and a timestamp as the exclusive end', () => {
    expect(dateFilter('2026-11-22', '2026-11-22')).toEqual({ from: new Date('2026-11-22T00:00:00Z'), to: new Date('2026-11-23T00:00:00Z') });
    expect(dateFilter(undefined, '2026-11-22T10:00:00Z')).toEqual({ to: new Date('2026-11-22T10:00:00Z') });
    expect(dateFilter()).toEqual({});
  });

  it('rejects an empty interval as invalid: INVALID_DATE_RANGE on end_date', () => {
    for (const [start, end] of [
      ['2026-11-23', '2026-11-22'],
      ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00Z'],
      ['2026-11-23T00:00:00Z', '2026-11-22'],
    ] as const) {
      expect(() => dateFilter(start, end)).toThrow(expect.objectContaining({ kind: 'invalid', code: 'INVALID_DATE_RANGE', extra: { field: 'end_date' } }));
    }
  });

  it('defaults a metrics period to the 30 days before its end', () => {
    const { start, end } = resolvePeriod(undefined, '2026-11-22');
    expect(end).toEqual(new Date('2026-11-23T00:00:00Z'));
    expect(end.getTime() - start.getTime()).toBe(30 * 24 * 3600 * 1000);
  });
});

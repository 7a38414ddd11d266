import { histogramPercentile, trend } from '../../src/modules/metrics/analytics-metrics';
import { formScores, validateFormReply } from '../../temporal/executions.shared';

describe('analytics definitions', () => {
  it('accepts rating 1–5 and nps 0–10 as whole numbers only', () => {
    const rating = { name: 'r', type: 'rating' as const, required: true, label: 'Rate' };
    const nps = { name: 'n', type: 'nps' as const, required: true, label: 'Recommend' };
    expect(['1', ' 5 '].map((v) => validateFormReply(rating, v))).toEqual([{ value: '1' }, { value: '5' }]);
    for (const bad of ['0', '6', '4.5', 'five', '-1']) expect(validateFormReply(rating, bad)).toHaveProperty('problem');
    expect(['0', '10'].map((v) => validateFormReply(nps, v))).toEqual([{ value: '0' }, { value: '10' }]);
    for (const bad of ['11', '010', '7.0']) expect(validateFormReply(nps, bad)).toHaveProperty('problem');
    expect(formScores([rating, nps, { name: 't', type: 'text', required: false, label: 'x' }], { r: '4', n: '9', t: 'hi' })).toEqual({ rating: [4], nps: [9] });
    expect(formScores([{ name: 't', type: 'text', required: false, label: 'x' }], { t: 'hi' })).toBeUndefined();
  });

  it('trends: stable within ±5 % or with a null side, else the direction', () => {
    expect(trend(105, 100)).toBe('stable');
    expect(trend(95, 100)).toBe('stable');
    expect(trend(106, 100)).toBe('increasing');
    expect(trend(94, 100)).toBe('decreasing');
    expect(trend(1, 0)).toBe('increasing');
    expect(trend(0, 0)).toBe('stable');
    expect(trend(null, 3)).toBe('stable');
  });

  it('percentiles of an empty histogram are null, of one bucket its value', () => {
    expect(histogramPercentile([], 0.5)).toBeNull();
    expect(histogramPercentile([[0, 3]], 0.99)).toBe(0);
  });
});

/** The Temporal UI links and summaries that carry no more than they should. */
import { temporalUiLink } from '../../src/temporal-ui';
import { executionSummary, maskExternalId } from '../../temporal/summaries.shared';

describe('Temporal UI links and summaries', () => {
  it('links only when TEMPORAL_UI_URL is set, escaping the namespace and workflow id', () => {
    expect(temporalUiLink({ TEMPORAL_UI_URL: undefined, TEMPORAL_NAMESPACE: 'default' }, 'exec_1')).toEqual({});
    expect(temporalUiLink({ TEMPORAL_UI_URL: 'https://ui.example/', TEMPORAL_NAMESPACE: 'prod ns' }, 'export:exp_1')).toEqual({
      temporal_ui_url: 'https://ui.example/namespaces/prod%20ns/workflows/export%3Aexp_1',
    });
  });

  it('masks a customer external id to its last 4 characters', () => {
    expect(maskExternalId('+15550000001')).toBe('…0001');
    expect(maskExternalId('ada@example.com')).toBe('….com');
    expect(maskExternalId('1234')).toBe('…');
    expect(executionSummary({ workflowName: 'Greeter', channel: 'whatsapp', customerExternalId: '+15550000001', revision: 3 })).toBe('Greeter · whatsapp · …0001 · rev 3');
    expect(executionSummary({ workflowName: 'Greeter\nline', channel: 'voice', customerExternalId: null, revision: 1 })).toBe('Greeter line · voice · rev 1');
  });
});

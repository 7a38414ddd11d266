/** The conversation cases (the per-customer queue, handoffs to people, races between a conversation's events), one test file: test/helpers/cases.ts. */
// First: a case waits for a real form timeout, and the minimum is read when src/ loads.
import '../../helpers/short-form-timeouts';
import { runCases } from '../../helpers/cases';

// The longest any of the cases needs (a case sets none of its own).
jest.setTimeout(120_000);

runCases(__dirname);

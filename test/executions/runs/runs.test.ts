/** The cases of an execution's run (forms and replies, revisions and failures, operators' actions, resets, history replay), one test file: test/helpers/cases.ts. */
// First: a case waits for a real form timeout, and the minimum is read when src/ loads.
import '../../helpers/short-form-timeouts';
import { runCases } from '../../helpers/cases';

runCases(__dirname);

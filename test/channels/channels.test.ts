/** The channel cases (WhatsApp and Instagram through Meta), one test file: test/helpers/cases.ts. */
// First: form-window waits for a real form timeout, and the minimum is read when src/ loads.
import '../helpers/short-form-timeouts';
import { runCases } from '../helpers/cases';

runCases(__dirname);

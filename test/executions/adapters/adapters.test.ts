/** The cases of a run's calls out (the channel provider's errors, AI and the adapters, failures after the commit, message-started runs), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

// The longest any of the cases needs (a case sets none of its own).
jest.setTimeout(120_000);

runCases(__dirname);

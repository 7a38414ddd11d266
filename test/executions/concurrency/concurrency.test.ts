/** The concurrency cases (one conversation per customer, trigger limits, fair sharing, the reconciler's claims), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

// The longest any of the cases needs (a case sets none of its own).
jest.setTimeout(120_000);

runCases(__dirname);

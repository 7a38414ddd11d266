/** The cases of an execution's start (queued starts' leases, cancel and reconcile, the start's confirmation), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

// The longest any of the cases needs (a case sets none of its own).
jest.setTimeout(120_000);

runCases(__dirname);

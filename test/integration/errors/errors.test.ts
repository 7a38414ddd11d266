/** The error cases (every documented code, junk input never a 500, Temporal down), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);

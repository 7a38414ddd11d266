/** The documentation's checks and its tested guides, one test file: test/helpers/cases.ts. */
import { runCases } from '../helpers/cases';

jest.setTimeout(180_000);

runCases(__dirname);

/** The reports and exports cases (PDF reports, exports to local files and to S3), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

// The longest any of the cases needs (a case sets none of its own).
jest.setTimeout(180_000);

runCases(__dirname);

/** The access cases (JWT bearer tokens, trusted proxies, the users command), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);

/** The OAuth 2.0 cases (the authorization server and its grants), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);

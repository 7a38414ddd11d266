/** The API's cross-cutting cases (authentication, tenancy, rate limits, HTTP behaviour, secrets in logs, retention), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);

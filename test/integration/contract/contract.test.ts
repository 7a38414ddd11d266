/** The OpenAPI document's cases (the document served, every response checked against it), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);

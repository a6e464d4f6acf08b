-- A parameter's pattern must compile by itself, not only inside the
-- anchors it is matched with (security review N-L8). Matched as
-- '^(?:' || pattern || ')$', a pattern with a parenthesis that closes
-- below its own start (`[a-z]+)|(.*`) compiled, and escaped the anchors:
-- it matched anything, though it read as strict. Compiled bare, PostgreSQL
-- refuses its unbalanced parentheses, and the job is refused when it is
-- written. Jobs written before keep their declarations until rewritten;
-- `baton doctor` is not asked to find them (a job is re-applied from its
-- file with every `ctl apply`).
CREATE OR REPLACE FUNCTION baton_parameter_rules_problem(rules JSONB, defaults JSONB) RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
  k TEXT;
  r JSONB;
BEGIN
  FOR k, r IN SELECT * FROM jsonb_each(rules) LOOP
    IF r ? 'pattern' THEN
      BEGIN
        PERFORM '' ~ (r ->> 'pattern');
        PERFORM '' ~ ('^(?:' || (r ->> 'pattern') || ')$');
      EXCEPTION WHEN invalid_regular_expression THEN
        RETURN format('parameters.%s.pattern: %s', k, SQLERRM);
      END;
      IF defaults ? k AND (defaults ->> k) !~ ('^(?:' || (r ->> 'pattern') || ')$') THEN
        RETURN format('parameters.%s.default: %s does not match the pattern %s', k, quote_literal(defaults ->> k),
                      quote_literal(r ->> 'pattern'));
      END IF;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

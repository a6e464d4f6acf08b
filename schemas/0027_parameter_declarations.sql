-- A job declares the parameters a trigger may set (docs/scheduling.md,
-- "Parameters"; docs/security.md, "Parameters and shells"): one entry per
-- name, an object of rules, '{}' for a name that takes any text.
--
--   type      'string' (default), 'integer', 'number' or 'boolean'
--   pattern   a PostgreSQL regular expression the whole value must match
--   enum      the values allowed (text)
--   required  a trigger must set it (such a parameter has no default)
--   operate   false: only an admin token may set it (default true)
--
-- A trigger that names a parameter the job does not declare, or a value its
-- rules refuse, is refused with the reason, in the statement that would
-- insert the run (no extra round trip, no window between the check and the
-- insert). Every job written before this migration declares the names of
-- its default parameters, as loose as before.
ALTER TABLE job_definitions ADD COLUMN parameter_rules JSONB NOT NULL DEFAULT '{}'::jsonb;
UPDATE job_definitions SET parameter_rules =
  coalesce((SELECT jsonb_object_agg(k, '{}'::jsonb) FROM jsonb_object_keys(parameters) AS k), '{}'::jsonb)
  WHERE parameters IS NOT NULL AND jsonb_typeof(parameters) = 'object';

-- Why `rules` refuse the parameters `given` (a JSON object, or NULL for
-- none), or NULL when they do not. `admin`: the caller may set a parameter
-- declared with operate: false. A value is judged as the worker will see
-- it: a string as it is, anything else as its JSON text. Names and values
-- in the reason are cut and quoted (they come from the caller).
CREATE FUNCTION baton_parameters_refused(rules JSONB, given JSONB, admin BOOLEAN)
RETURNS TEXT LANGUAGE plpgsql STABLE AS $$
DECLARE
  k TEXT;
  v JSONB;
  r JSONB;
  s TEXT;
  t TEXT;
  declared TEXT;
BEGIN
  IF given IS NOT NULL AND jsonb_typeof(given) <> 'object' THEN
    RETURN 'parameters must be an object of names to values';
  END IF;
  FOR k, v IN SELECT * FROM jsonb_each(coalesce(given, '{}'::jsonb)) LOOP
    r := rules -> k;
    IF r IS NULL THEN
      SELECT coalesce(string_agg(quote_literal(n), ', ' ORDER BY n), 'none')
        INTO declared FROM jsonb_object_keys(rules) AS n;
      RETURN format('parameter %s is not declared by the job (it declares: %s)', quote_literal(left(k, 64)),
                    declared);
    END IF;
    IF NOT admin AND (r ->> 'operate') = 'false' THEN
      RETURN format('parameter %s may be set by an admin token only (operate: false)', quote_literal(k));
    END IF;
    s := CASE jsonb_typeof(v) WHEN 'string' THEN v #>> '{}' ELSE v::text END;
    t := coalesce(r ->> 'type', 'string');
    IF (t = 'integer' AND s !~ '^-?[0-9]{1,18}$')
       OR (t = 'number' AND s !~ '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$')
       OR (t = 'boolean' AND s NOT IN ('true', 'false')) THEN
      RETURN format('parameter %s must be %s %s, got %s', quote_literal(k),
                    CASE t WHEN 'integer' THEN 'an' ELSE 'a' END, t, quote_literal(left(s, 64)));
    END IF;
    IF r ? 'enum' AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(r -> 'enum') AS e WHERE e = s) THEN
      RETURN format('parameter %s must be one of %s, got %s', quote_literal(k),
                    (SELECT string_agg(quote_literal(e), ', ') FROM jsonb_array_elements_text(r -> 'enum') AS e),
                    quote_literal(left(s, 64)));
    END IF;
    IF r ? 'pattern' AND s !~ ('^(?:' || (r ->> 'pattern') || ')$') THEN
      RETURN format('parameter %s must match the pattern %s, got %s', quote_literal(k),
                    quote_literal(r ->> 'pattern'), quote_literal(left(s, 64)));
    END IF;
  END LOOP;
  FOR k, r IN SELECT * FROM jsonb_each(rules) LOOP
    IF (r ->> 'required') = 'true' AND NOT coalesce(given, '{}'::jsonb) ? k THEN
      RETURN format('parameter %s is required', quote_literal(k));
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

-- Why a job's declarations are unusable, or NULL: a pattern PostgreSQL
-- cannot compile, or a default its pattern refuses (checked when the job
-- is written, not at its first trigger; the type and the enum of a default
-- are checked by the job reader, which names the key).
CREATE FUNCTION baton_parameter_rules_problem(rules JSONB, defaults JSONB) RETURNS TEXT
LANGUAGE plpgsql STABLE AS $$
DECLARE
  k TEXT;
  r JSONB;
BEGIN
  FOR k, r IN SELECT * FROM jsonb_each(rules) LOOP
    IF r ? 'pattern' THEN
      BEGIN
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

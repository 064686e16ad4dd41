/*
 * env: the TLMPI_* configuration table (src/core/env.def), parsed once at init and cached.
 * Owner of every getenv("TLMPI_*"): nothing else reads the environment for TLMPI_ names.
 * Does not include mpi.h; unit-testable alone.
 */
#ifndef TLMPI_ENV_H
#define TLMPI_ENV_H

#include <stdint.h>
#include <stdio.h>

typedef enum { TLMPI_ENV_T_BOOL, TLMPI_ENV_T_INT, TLMPI_ENV_T_SIZE, TLMPI_ENV_T_ENUM,
               TLMPI_ENV_T_TRI, TLMPI_ENV_T_STRING, TLMPI_ENV_T_LIST } tlmpi_env_type_t;
typedef enum { TLMPI_ENV_S_ALL_EQ, TLMPI_ENV_S_LOCAL } tlmpi_env_scope_t;

typedef enum {
#define TLMPI_ENV(_name, _type, _def, _scope, _help) TLMPI_ENV_##_name,
#include "env.def"
#undef TLMPI_ENV
    TLMPI_ENV_COUNT
} tlmpi_env_id_t;

/* TRI values */
enum { TLMPI_TRI_NO = 0, TLMPI_TRI_YES = 1, TLMPI_TRI_AUTO = 2 };

typedef struct {
    const char *name;   /* without the TLMPI_ prefix */
    tlmpi_env_type_t type;
    const char *deflt;
    tlmpi_env_scope_t scope;
    const char *help;
} tlmpi_env_desc_t;

typedef struct {
    int64_t i;          /* BOOL, INT, SIZE, TRI, ENUM (index of the value) */
    const char *s;      /* the string as given (or default); STRING and LIST use this */
    int is_set;         /* 1 if taken from the environment */
} tlmpi_env_val_t;

extern const tlmpi_env_desc_t tlmpi_env_desc[TLMPI_ENV_COUNT];
extern tlmpi_env_val_t tlmpi_env_val[TLMPI_ENV_COUNT];

#define TLMPI_ENV_I(_name) (tlmpi_env_val[TLMPI_ENV_##_name].i)
#define TLMPI_ENV_S(_name) (tlmpi_env_val[TLMPI_ENV_##_name].s)

/* Parse every variable from getenv (or from lookup when non-NULL: unit tests). Invalid values
 * fall back to the default with a warning written to *errs_p count. Returns the number of invalid
 * or unknown TLMPI_* variables found (each warned once through the log). */
typedef const char *(*tlmpi_env_lookup_fn)(const char *name);
int tlmpi_env_load(tlmpi_env_lookup_fn lookup, char **environ_p);

/* Typed parsers, exposed for tests. Return 0 on success, -1 on bad input. */
int tlmpi_env_parse_bool(const char *s, int64_t *v_p);
int tlmpi_env_parse_size(const char *s, int64_t *v_p);
int tlmpi_env_parse_int(const char *s, int64_t *v_p);
int tlmpi_env_parse_tri(const char *s, int64_t *v_p);
int tlmpi_env_parse_enum(const char *help, const char *s, int64_t *v_p);
/* 1 if item is in the comma separated list (or the list is "all") */
int tlmpi_env_list_has(const char *list, const char *item);

/* Set one variable (name without prefix) from a string: 0 ok, -1 unknown name, -2 bad value.
 * The value is copied (one copy per distinct value, kept for the life of the process). */
int tlmpi_env_set(const char *name, const char *value);

/* Hash of the effective ALL_EQ values (for VERIFY_UNIFORM). */
uint64_t tlmpi_env_hash_all_eq(void);

/* Print every variable with value and help (tlmpi_info), or the Markdown table (docs/ENV.md). */
void tlmpi_env_dump(FILE *f);
void tlmpi_env_markdown(FILE *f);

#endif

/*
 * half: IEEE binary16 and bfloat16 on the host. Conversions (round to nearest even), the
 * TLMPI_FLOAT16 / TLMPI_BFLOAT16 datatypes and tlmpi's MPI_Ops over them, used wherever the MPI
 * cannot reduce half types itself (MPICH 4.0.2 aborts on MPIX_C_FLOAT16 with built-in ops; no MPI
 * here has a bfloat16). Reductions compute in float and round once per element.
 */
#ifndef TLMPI_HALF_H
#define TLMPI_HALF_H

#include <stdint.h>

float tlmpi_f16_to_float(uint16_t h);
uint16_t tlmpi_float_to_f16(float f);
float tlmpi_bf16_to_float(uint16_t h);
uint16_t tlmpi_float_to_bf16(float f);

#endif

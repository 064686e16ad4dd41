bin_PROGRAMS += tools/tlmpi_info
tools_tlmpi_info_SOURCES = tools/tlmpi_info.c
tools_tlmpi_info_LDADD = libtlmpi.la libtlmpi_core.la

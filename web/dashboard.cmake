# The admin listener's dashboard (docs/dashboard.md): every file of
# web/dashboard/ embedded into the gateway library as a generated source
# (web/embed_assets.cmake), so a packaged binary serves it with nothing else
# installed. Regenerated when a file changes; a file added or removed
# re-runs the configure step (CONFIGURE_DEPENDS).
set(ARBITER_DASHBOARD_DIR ${CMAKE_CURRENT_LIST_DIR}/dashboard)
set(ARBITER_DASHBOARD_SOURCE ${CMAKE_BINARY_DIR}/generated/dashboard_assets.cpp)
file(GLOB_RECURSE ARBITER_DASHBOARD_FILES CONFIGURE_DEPENDS ${ARBITER_DASHBOARD_DIR}/*)
add_custom_command(
  OUTPUT ${ARBITER_DASHBOARD_SOURCE}
  COMMAND ${CMAKE_COMMAND} -DASSET_DIR=${ARBITER_DASHBOARD_DIR} -DOUTPUT=${ARBITER_DASHBOARD_SOURCE}
          -P ${CMAKE_CURRENT_LIST_DIR}/embed_assets.cmake
  DEPENDS ${ARBITER_DASHBOARD_FILES} ${CMAKE_CURRENT_LIST_DIR}/embed_assets.cmake
  COMMENT "Embedding web/dashboard/ into the gateway")
target_sources(arbiter_gateway PRIVATE ${ARBITER_DASHBOARD_SOURCE})

# The ROS 2 message packages installed from PyPI wheels export the include
# directories of the machine that built the wheels (/opt/python/cp3XX-cp3XX/...)
# in their <pkg>::<pkg>__rosidl_generator_py targets. CMake refuses imported
# targets with missing include directories, so those are dropped here, at the end
# of configuration, from every imported target of this directory. The right Python
# and NumPy include directories come from this build's own FindPython3. With a ROS
# installation every directory exists and nothing changes.

function(ik_control_drop_missing_include_dirs)
  get_directory_property(_targets IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(NOT _dirs)
      continue()
    endif()
    set(_kept "")
    set(_dropped "")
    foreach(_dir IN LISTS _dirs)
      if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
        list(APPEND _kept "${_dir}")
      else()
        list(APPEND _dropped "${_dir}")
      endif()
    endforeach()
    if(_dropped)
      message(STATUS "${_target}: dropping missing include directories ${_dropped}")
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
    endif()
  endforeach()
endfunction()

cmake_language(DEFER CALL ik_control_drop_missing_include_dirs)
